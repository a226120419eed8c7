package dev.aiguard.boot.autoconfigure;

import java.util.Map;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.support.AutowireCandidateQualifier;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.Environment;

/**
 * Registers one {@code AiGuard<ChatChunk>} bean per {@code aiguard.policies.<name>}, named
 * {@code aiguard.<name>} and qualified by {@code <name>}. The beans are thin: each asks the
 * {@link AiGuardRegistry} for its guard, so a policy is built once, with the registry's checks.
 */
final class PolicyBeanRegistrar implements BeanDefinitionRegistryPostProcessor {

	private final Environment environment;

	PolicyBeanRegistrar(Environment environment) {
		this.environment = environment;
	}

	@Override
	public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
		Map<String, Object> policies = Binder.get(environment)
			.bind(AiGuardProperties.PREFIX + ".policies", Bindable.mapOf(String.class, Object.class))
			.orElse(Map.of());
		if (!(registry instanceof BeanFactory beans)) {
			return;
		}
		ResolvableType type = ResolvableType.forClassWithGenerics(AiGuard.class, ChatChunk.class);
		for (String name : policies.keySet()) {
			String beanName = AiGuardAutoConfiguration.GUARD_BEAN_PREFIX + name;
			if (registry.containsBeanDefinition(beanName)) {
				continue;
			}
			RootBeanDefinition definition = new RootBeanDefinition();
			definition.setTargetType(type);
			definition.setInstanceSupplier(() -> beans.getBean(AiGuardRegistry.class).guard(name));
			definition.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
			definition.setDescription("the guard of aiguard.policies." + name);
			registry.registerBeanDefinition(beanName, definition);
		}
	}

	@Override
	public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
		// every bean is registered above
	}
}
